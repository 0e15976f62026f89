-- source: risingwavelabs/risingwave:integration_tests/kinesis-s3-source/create_source.sql + create_mv.sql, snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: a Kinesis source with INCLUDE key / partition / offset / timestamp / payload and an S3 source, both FORMAT PLAIN ENCODE JSON; MVs with a regular join of aggregated subqueries (inner LEFT JOIN), a filter on the hidden _rw_kinesis_timestamp column, and a TUMBLE-vs-TUMBLE window join
-- dialect: risingwave
-- check: ok
CREATE SOURCE promo_view (
    slot_id BIGINT,
    promo_id BIGINT,
    viewed_at TIMESTAMPTZ
)
INCLUDE key
INCLUDE partition
INCLUDE offset
INCLUDE timestamp
INCLUDE payload
WITH (
    connector = 'kinesis',
    stream = 'promo-view',
    aws.region='eu-west-1',
    scan.startup.mode='earliest',
    aws.credentials.access_key_id ='placeholder',
    aws.credentials.secret_access_key='placeholder',
    endpoint='http://kinesis-mock:4566'
) FORMAT PLAIN ENCODE JSON;

CREATE SOURCE promo_click (
    slot_id BIGINT,
    clicked_at TIMESTAMPTZ
) WITH (
    connector = 's3',
    s3.region_name = 'eu-west-1',
    s3.bucket_name = 'promo-click',
    s3.credentials.access = 'placeholder',
    s3.credentials.secret = 'placeholder',
    s3.endpoint_url = 'http://kinesis-mock:4566'
) FORMAT PLAIN ENCODE JSON;

CREATE MATERIALIZED VIEW promo_ctr AS
SELECT
    promo_clicks.promo_id AS promo_id,
    promo_clicks.click_total :: NUMERIC / promo_views.view_total AS ctr
FROM
    (
        SELECT
            promo_view.promo_id AS promo_id,
            COUNT(*) AS view_total
        FROM
            promo_view
        GROUP BY
            promo_id
    ) AS promo_views
    JOIN (
        SELECT
            pv.promo_id,
            COUNT(*) AS click_total
        FROM
            promo_click AS pc
            LEFT JOIN promo_view AS pv ON pc.slot_id = pv.slot_id
        GROUP BY
            pv.promo_id
    ) AS promo_clicks ON promo_views.promo_id = promo_clicks.promo_id;

CREATE MATERIALIZED VIEW kinesis_arrival AS
SELECT
    promo_view._rw_kinesis_timestamp AS timestamp
FROM
    promo_view
WHERE promo_view._rw_kinesis_timestamp IS NOT NULL AND promo_view._rw_kinesis_timestamp >= '2025-03-01 00:00:00+00'::TIMESTAMPTZ;

CREATE MATERIALIZED VIEW promo_ctr_5min AS
SELECT
    pc.promo_id AS promo_id,
    pc.click_total :: NUMERIC / pv.view_total AS ctr,
    pv.window_end AS window_end
FROM
    (
        SELECT
            promo_id,
            COUNT(*) AS view_total,
            window_end
        FROM
            TUMBLE(
                promo_view,
                viewed_at,
                INTERVAL '5' MINUTE
            )
        GROUP BY
            promo_id,
            window_end
    ) AS pv
    JOIN (
        SELECT
            pv.promo_id,
            COUNT(*) AS click_total,
            pv.window_end AS window_end
        FROM
            TUMBLE(promo_click, clicked_at, INTERVAL '5' MINUTE) AS pc
            INNER JOIN TUMBLE(
                promo_view,
                viewed_at,
                INTERVAL '5' MINUTE
            ) AS pv ON pv.slot_id = pc.slot_id
            AND pv.window_end = pc.window_end
        GROUP BY
            pv.promo_id,
            pv.window_end
    ) AS pc ON pv.promo_id = pc.promo_id
    AND pv.window_end = pc.window_end;
