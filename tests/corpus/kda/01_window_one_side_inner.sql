-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-join-clause.html (Amazon Kinesis Data Analytics SQL Reference, "JOIN clause", Example Dataset + Example 1: Time Window on One Side of a JOIN (INNER JOIN)), page as stored in the search index
-- modeled on: two pumps split SOURCE_SQL_STREAM_001 into quoted UPPER in-app streams selecting "ROWTIME" into a timestamp column; a third pump inner-joins them unquoted, window on the left side only, ROWTIME / alias.rowtime / alias.ROWTIME selected into lower-case quoted columns
-- dialect: kda
-- check: ok
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("bookingid" INTEGER, "booked" INTEGER, "delivered" INTEGER) WITH (connector = 'files', format = 'json', path = '/data/source');
-- program:
CREATE OR REPLACE STREAM "BOOKINGS_STREAM" ("bookingid" int, "bookingrowtime" timestamp);
CREATE OR REPLACE PUMP "BOOKINGS_STREAM_PUMP" AS INSERT INTO "BOOKINGS_STREAM"
SELECT STREAM "bookingid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "booked" = 1;

CREATE OR REPLACE STREAM "DELIVERIES_STREAM" ("bookingid" int, "deliveryrowtime" timestamp);
CREATE OR REPLACE PUMP "DELIVERIES_STREAM_PUMP" AS INSERT INTO "DELIVERIES_STREAM"
SELECT STREAM "bookingid", "ROWTIME"
FROM "SOURCE_SQL_STREAM_001" WHERE "delivered" = 3;

CREATE OR REPLACE STREAM "OUTPUT_STREAM" ("resultrowtime" timestamp, "bookingid" int, "deliverytime" timestamp, "bookingtime" timestamp);
CREATE OR REPLACE PUMP "OUTPUT_STREAM_PUMP" AS
INSERT INTO "OUTPUT_STREAM"
  SELECT STREAM ROWTIME as "resultrowtime", d."bookingid", d.rowtime as "deliverytime", b.ROWTIME as "bookingtime"
    FROM BOOKINGS_STREAM OVER (RANGE INTERVAL '2' MINUTE PRECEDING) AS b
      JOIN DELIVERIES_STREAM AS d
        ON b."bookingid" = d."bookingid";
