-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-join-clause.html (Amazon Kinesis Data Analytics SQL Reference, "JOIN clause", Example Dataset + Example 4: Time Windows on Both Sides of a RIGHT JOIN (RIGHT OUTER JOIN)), page as stored in the search index
-- modeled on: the same two ROWTIME-capturing split pumps, then a RIGHT JOIN with a RANGE ... PRECEDING window on both sides, unquoted stream names, alias.ROWTIME selected into quoted columns
-- dialect: kda
-- check: ok
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("ticketid" INTEGER, "requests" INTEGER, "replies" INTEGER) WITH (connector = 'files', format = 'json', path = '/data/source');
-- program:
CREATE OR REPLACE STREAM "REQUESTS_STREAM" ("ticketid" int, "requestrowtime" timestamp);
CREATE OR REPLACE PUMP "REQUESTS_STREAM_PUMP" AS INSERT INTO "REQUESTS_STREAM"
SELECT STREAM "ticketid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "requests" = 1;

CREATE OR REPLACE STREAM "REPLIES_STREAM" ("ticketid" int, "replyrowtime" timestamp);
CREATE OR REPLACE PUMP "REPLIES_STREAM_PUMP" AS INSERT INTO "REPLIES_STREAM"
SELECT STREAM "ticketid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "replies" = 2;

CREATE OR REPLACE STREAM "OUTPUT_STREAM" ("resultrowtime" timestamp, "ticketid" int, "replytime" timestamp, "requesttime" timestamp);
CREATE OR REPLACE PUMP "OUTPUT_STREAM_PUMP" AS INSERT INTO "OUTPUT_STREAM"
  SELECT STREAM ROWTIME as "resultrowtime", r."ticketid", r.ROWTIME as "replytime", q.ROWTIME as "requesttime"
    FROM REQUESTS_STREAM OVER (RANGE INTERVAL '5' MINUTE PRECEDING) AS q
      RIGHT JOIN REPLIES_STREAM OVER (RANGE INTERVAL '5' MINUTE PRECEDING) AS r
        ON q."ticketid" = r."ticketid";


