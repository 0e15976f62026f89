-- source: becloudway/aws-serverless-cost-control:resources/random-cut-forest.sql, commit 6d000f923d0124a746f142d72e46bacb902c5d0a (2019-03-14)
-- modeled on: RANDOM_CUT_FOREST over a CURSOR of one column, comma-joined (FROM TABLE(...) AS rcf, SOURCE_SQL_STREAM_001 AS SOURCE) back to the unquoted input stream to recover the other columns; a second pump ORDER BY FLOOR("TEMP_STREAM".ROWTIME TO SECOND), "--" comments without a space
-- dialect: kda
-- check: 12_rcf_comma_join.sql:28:3: error: unsupported table function RANDOM_CUT_FOREST
-- fair rejection: RANDOM_CUT_FOREST (a KDA machine-learning table function) is outside joins' scope; the comma join pairs its output with the input stream
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("usage" DOUBLE, "sampledAt" TIMESTAMP, "meterId" VARCHAR(500), "site" VARCHAR(60)) WITH (connector = 'files', format = 'json', path = '/data/source');
-- program:
--A staging stream for the scored rows.
CREATE OR REPLACE STREAM "TEMP_STREAM" (
            "usage"           DOUBLE,
            "sampledAt"       TIMESTAMP,
            "meterId"         VARCHAR(500),
            "site"            VARCHAR(60),
            "ANOMALY_SCORE"   DOUBLE);

--The stream the application writes out.
CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (
            "usage"           DOUBLE,
            "sampledAt"       TIMESTAMP,
            "meterId"         VARCHAR(500),
            "site"            VARCHAR(60),
            "ANOMALY_SCORE"   DOUBLE);

-- Score each input row with Random Cut Forest, then pair the score with the row's other columns
CREATE OR REPLACE PUMP "STREAM_PUMP" AS INSERT INTO "TEMP_STREAM"
  SELECT STREAM SRC."usage", SRC."sampledAt", SRC."meterId", SRC."site", rcf."ANOMALY_SCORE" FROM
  TABLE(RANDOM_CUT_FOREST(
    CURSOR(SELECT STREAM "usage" FROM SOURCE_SQL_STREAM_001), 50, 128, 50000, 1
  )
) AS rcf, SOURCE_SQL_STREAM_001 AS SRC;

-- Highest scores first within each second
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS
   INSERT INTO "DESTINATION_SQL_STREAM"
      SELECT STREAM * FROM "TEMP_STREAM"
      ORDER BY FLOOR("TEMP_STREAM".ROWTIME TO SECOND), ANOMALY_SCORE DESC;
