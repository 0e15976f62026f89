# The Airflow image of the stack (docker-compose.yml; build context: the repository root):
# Airflow 3.3.2 on Python 3.11, this repository's pinned dependencies installed exactly as
# `make setup` installs them (requirements.txt with constraints.txt), and a Java 17 runtime:
# with the LocalExecutor a task runs in the scheduler's container, and so does the Spark driver
# it starts (pyspark, local or client mode).
FROM eclipse-temurin:17.0.15_6-jre-jammy AS java

FROM apache/airflow:3.3.2-python3.11

USER root
COPY --from=java /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk
ENV PATH="${JAVA_HOME}/bin:${PATH}"
# `streamjoin` on PATH: the CLI of the code mounted under /opt/streamjoin/spark_apps (PYTHONPATH),
# so a code change needs no image rebuild. The data folder is created here so that the named
# volume mounted on it starts out owned by the airflow user (uid 50000, gid 0).
RUN printf '#!/usr/bin/env python\nimport sys\n\nfrom streamjoin.cli import main\n\nsys.exit(main())\n' \
        > /usr/local/bin/streamjoin \
    && chmod 755 /usr/local/bin/streamjoin \
    && mkdir -p /opt/streamjoin/data /opt/airflow/auth \
    && chown -R airflow:0 /opt/streamjoin /opt/airflow/auth \
    && chmod -R g+rwX /opt/streamjoin /opt/airflow/auth

USER airflow
COPY requirements.txt constraints.txt /tmp/streamjoin/
RUN pip install --no-cache-dir -r /tmp/streamjoin/requirements.txt -c /tmp/streamjoin/constraints.txt \
    && python -c "import airflow, pyspark; assert (airflow.__version__, pyspark.__version__) == ('3.3.2', '4.3.0')" \
    && java -version
