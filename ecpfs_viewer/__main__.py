from ecpfs_viewer.cli import main

raise SystemExit(main())
