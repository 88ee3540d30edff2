from scalegnn.cli import main

raise SystemExit(main())
