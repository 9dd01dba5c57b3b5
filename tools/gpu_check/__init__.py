"""The GPU check (`python3 tools/gpu_check`): one prepared device call that runs what the course
has never run on a GPU, and its dry run here (`--dry-run`). See __main__.py and plan.py."""
