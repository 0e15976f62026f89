"""The spark-submit entry point of every app:

    spark-submit spark_apps/run_app.py include/apps/hourly_city_sales [--run-for SECONDS] [--until-idle]

Runs the app's query (its `query.sql` and `app.toml`) from its checkpoint; see
`streamjoin.runtime.app` for the control requests (graceful stop, restart with new snapshots).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `streamjoin` without an install

from streamjoin.runtime.app import main

if __name__ == "__main__":
    sys.exit(main())
