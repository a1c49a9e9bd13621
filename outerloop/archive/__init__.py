"""Archive: ended runs' files to object storage with rclone, verified before deletion.

``spec`` (pure: where things live, the archive job's spec) is what the lanes import;
``remote``, ``rclone``, ``pack`` and ``job`` perform the effects inside the archive job
and the ``outerloop archive`` commands, never inside a tick.
"""
