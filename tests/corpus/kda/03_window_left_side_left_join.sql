-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-join-clause.html (Amazon Kinesis Data Analytics SQL Reference, "JOIN clause", Example Dataset + Example 5: Time Window on One Side of a LEFT JOIN (LEFT OUTER JOIN)), page as stored in the search index
-- modeled on: the ROWTIME-capturing split pumps, then a LEFT JOIN whose preserved (left) side has the RANGE window and whose right side has none; only left-side columns and o.ROWTIME are output
-- dialect: kda
-- check: ok
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("rideid" INTEGER, "pickups" INTEGER, "dropoffs" INTEGER) WITH (connector = 'files', format = 'json', path = '/data/source');
-- program:
CREATE OR REPLACE STREAM "PICKUPS_STREAM" ("rideid" int, "pickuprowtime" timestamp);
CREATE OR REPLACE PUMP "PICKUPS_STREAM_PUMP" AS INSERT INTO "PICKUPS_STREAM"
SELECT STREAM "rideid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "pickups" = 1;

CREATE OR REPLACE STREAM "DROPOFFS_STREAM" ("rideid" int, "dropoffrowtime" timestamp);
CREATE OR REPLACE PUMP "DROPOFFS_STREAM_PUMP" AS INSERT INTO "DROPOFFS_STREAM"
SELECT STREAM "rideid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "dropoffs" = 2;

CREATE OR REPLACE STREAM "OUTPUT_STREAM" ("resultrowtime" timestamp, "rideid" int, "pickuptime" timestamp);
CREATE OR REPLACE PUMP "OUTPUT_STREAM_PUMP" AS INSERT INTO "OUTPUT_STREAM"
  SELECT STREAM ROWTIME as "resultrowtime", p."rideid", p.ROWTIME as "pickuptime"
    FROM PICKUPS_STREAM OVER (RANGE INTERVAL '10' MINUTE PRECEDING) AS p
      LEFT JOIN DROPOFFS_STREAM AS x
        ON p."rideid" = x."rideid";
