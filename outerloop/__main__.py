from outerloop.cli import main

main()
