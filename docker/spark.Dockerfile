# The Spark standalone image (spark-master, spark-worker in docker-compose.yml; build context:
# the repository root). Not the apache/spark image: the driver runs in the Airflow image with
# pyspark 4.3.0 on Python 3.11, and executors must match it exactly (same Spark jars, same
# Python minor version for the pickled Python workers, same pyarrow/deltalake for the sink's
# writers). So: Python 3.11 + Java 17 + `pip install pyspark==4.3.0` and the executors' packages,
# all from constraints.txt, and `spark-class ...Master` / `...Worker` from that pyspark.
FROM eclipse-temurin:17.0.15_6-jre-jammy AS java

FROM python:3.11.13-slim-bookworm

COPY --from=java /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk
ENV PATH="${JAVA_HOME}/bin:${PATH}" \
    SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    SPARK_WORKER_DIR=/opt/spark/work \
    PYTHONDONTWRITEBYTECODE=1

COPY constraints.txt docker/spark-requirements.txt /tmp/streamjoin/
RUN pip install --no-cache-dir -r /tmp/streamjoin/spark-requirements.txt -c /tmp/streamjoin/constraints.txt \
    && python -c "import pyspark; assert pyspark.__version__ == '4.3.0', pyspark.__version__" \
    && test -x "${SPARK_HOME}/bin/spark-class" && command -v spark-class && java -version

# The same uid/gid as Airflow's user (50000:0): executors and the driver write the same
# checkpoints on the shared streamjoin-data volume.
RUN useradd --uid 50000 --gid 0 --home-dir /opt/spark --create-home spark \
    && mkdir -p /opt/spark/work /opt/streamjoin/data \
    && chown -R 50000:0 /opt/spark /opt/streamjoin \
    && chmod -R g+rwX /opt/spark /opt/streamjoin
USER 50000
WORKDIR /opt/spark
