from harness.cli.main import console_main

raise SystemExit(console_main())
