"""``python -m scalegnn.dist`` / ``torchrun -m scalegnn.dist``: one rank of a distributed run."""
from scalegnn.cli.dist import worker_main

raise SystemExit(worker_main())
