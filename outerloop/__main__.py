from outerloop.cli import entry

entry()
