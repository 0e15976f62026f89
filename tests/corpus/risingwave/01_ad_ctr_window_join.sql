-- source: risingwavelabs/risingwave:integration_tests/ad-ctr/create_source.sql + create_mv.sql, snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: two Kafka JSON sources and two click-through-rate MVs; keeps the regular join of two aggregated subqueries (one with an inner LEFT JOIN), the TUMBLE-vs-TUMBLE window join on key + window_end, :: NUMERIC casts, INTERVAL '5' MINUTE
-- dialect: risingwave
-- check: ok
CREATE SOURCE banner_view (
    auction_ref BIGINT,
    banner_id BIGINT,
    viewed_at TIMESTAMPTZ
) WITH (
    connector = 'kafka',
    topic = 'banner_view',
    properties.bootstrap.server = 'broker:29092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE SOURCE banner_tap (
    auction_ref BIGINT,
    tapped_at TIMESTAMPTZ
) WITH (
    connector = 'kafka',
    topic = 'banner_tap',
    properties.bootstrap.server = 'broker:29092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE MATERIALIZED VIEW banner_tap_rate AS
SELECT
    taps.banner_id AS banner_id,
    taps.tap_total :: NUMERIC / views.view_total AS tap_rate
FROM
    (
        SELECT
            banner_view.banner_id AS banner_id,
            COUNT(*) AS view_total
        FROM
            banner_view
        GROUP BY
            banner_id
    ) AS views
    JOIN (
        SELECT
            bv.banner_id,
            COUNT(*) AS tap_total
        FROM
            banner_tap AS bt
            LEFT JOIN banner_view AS bv ON bt.auction_ref = bv.auction_ref
        GROUP BY
            bv.banner_id
    ) AS taps ON views.banner_id = taps.banner_id;

CREATE MATERIALIZED VIEW banner_tap_rate_5min AS
SELECT
    bt.banner_id AS banner_id,
    bt.tap_total :: NUMERIC / bv.view_total AS tap_rate,
    bv.window_end AS window_end
FROM
    (
        SELECT
            banner_id,
            COUNT(*) AS view_total,
            window_end
        FROM
            TUMBLE(
                banner_view,
                viewed_at,
                INTERVAL '5' MINUTE
            )
        GROUP BY
            banner_id,
            window_end
    ) AS bv
    JOIN (
        SELECT
            bv.banner_id,
            COUNT(*) AS tap_total,
            bv.window_end AS window_end
        FROM
            TUMBLE(banner_tap, tapped_at, INTERVAL '5' MINUTE) AS bt
            INNER JOIN TUMBLE(
                banner_view,
                viewed_at,
                INTERVAL '5' MINUTE
            ) AS bv ON bv.auction_ref = bt.auction_ref
            AND bv.window_end = bt.window_end
        GROUP BY
            bv.banner_id,
            bv.window_end
    ) AS bt ON bv.banner_id = bt.banner_id
    AND bv.window_end = bt.window_end;
