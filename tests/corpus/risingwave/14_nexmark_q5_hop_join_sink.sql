-- source: risingwavelabs/risingwave:ci/scripts/sql/nexmark/ddl.sql + q5.sql, snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: one Kafka JSON source of STRUCT<...> columns with quoted field names and kafka.scan.startup.mode, VIEWs unpacking it with SELECT (col).* ... WHERE kind = n, and CREATE SINK ... AS a join of two HOP(src, ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND) aggregates (nested subquery, ON start = start AND num >= maxn) WITH (connector = 'blackhole', type = 'append-only', force_append_only = 'true'); -- noinspection comments kept
-- dialect: risingwave
-- check: ok
CREATE SOURCE marketplace (
kind BIGINT,
member STRUCT<"id" BIGINT,
	    "name" VARCHAR,
	    "email" VARCHAR,
	    "card" VARCHAR,
	    "town" VARCHAR,
	    "province" VARCHAR,
	    "date_time" TIMESTAMP,
	    "extra" VARCHAR>,
lot STRUCT<"id" BIGINT,
	    "title" VARCHAR,
	    "details" VARCHAR,
	    "opening_offer" BIGINT,
	    "floor_price" BIGINT,
	    "date_time" TIMESTAMP,
	    "closes" TIMESTAMP,
	    "seller" BIGINT,
	    "group_id" BIGINT,
	    "extra" VARCHAR>,
offer STRUCT<"lot" BIGINT,
	"bidder" BIGINT,
	"amount" BIGINT,
	"via" VARCHAR,
	"link" VARCHAR,
	"date_time" TIMESTAMP,
	"extra" VARCHAR>
) WITH (
connector = 'kafka',
topic = 'marketplace',
properties.bootstrap.server = 'localhost:9092',
kafka.scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE VIEW offer
AS
SELECT (offer).* FROM marketplace WHERE kind = 2;

CREATE VIEW lot
AS
SELECT (lot).* FROM marketplace WHERE kind = 1;

CREATE VIEW member
AS
SELECT (member).* FROM marketplace WHERE kind = 0;

-- noinspection SqlNoDataSourceInspectionForFile
-- noinspection SqlResolveForFile
CREATE SINK hot_lots
AS
SELECT
    LotOffers.lot, LotOffers.num
FROM (
    SELECT
        offer.lot,
        count(*) AS num,
        window_start AS starttime
    FROM
        HOP(offer, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY
        offer.lot,
        window_start
) AS LotOffers
JOIN (
    SELECT
        max(CountOffers.num) AS maxn,
        CountOffers.starttime_c
    FROM (
        SELECT
            count(*) AS num,
            window_start AS starttime_c
        FROM
            HOP(offer, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
        GROUP BY
            offer.lot,
            window_start
        ) AS CountOffers
    GROUP BY
        CountOffers.starttime_c
    ) AS MaxOffers
ON
    LotOffers.starttime = MaxOffers.starttime_c AND
    LotOffers.num >= MaxOffers.maxn
WITH ( connector = 'blackhole', type = 'append-only', force_append_only = 'true');
