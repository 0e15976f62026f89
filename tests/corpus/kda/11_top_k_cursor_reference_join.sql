-- source: mkrolczykk/aws_cloud-project:src/kinesis_analytics/most_popular_categories_by_views.sql, commit 025905ebe6954f0c25d3aa0cdd1e44836e95069b (HEAD; file last changed in 5801f637e7789467d0cc821eaab248c5b3941490)
-- modeled on: a Firehose input under a custom name prefix ("..._001", not SOURCE_SQL_STREAM_001) joined to an S3 reference table inside CURSOR(...) passed to TOP_K_ITEMS_TUMBLING; output streams lower-case quoted with unquoted columns; second pump runs the same function without a join
-- dialect: kda
-- check: 11_top_k_cursor_reference_join.sql:18:14: error: unsupported table function TOP_K_ITEMS_TUMBLING
-- fair rejection: TOP_K_ITEMS_TUMBLING (a KDA analytic table function over CURSOR(...)) is outside joins' scope; the join sits inside its cursor
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "firehose_clicks_delivery_stream_001" ("product_id" VARCHAR(10), "user_id" VARCHAR(16)) WITH (connector = 'files', format = 'json', path = '/data/clicks');
CREATE TABLE "products_information" ("product_id" VARCHAR(10) PRIMARY KEY, "brand" VARCHAR(50)) WITH (connector = 'files', format = 'csv', path = '/data/products');
-- program:
CREATE OR REPLACE STREAM "brands_output_stream" (
    brand VARCHAR(50),
    total_clicks INTEGER
);

CREATE OR REPLACE PUMP "BRANDS_STREAM_PUMP" AS
    INSERT INTO "brands_output_stream"
        SELECT STREAM *
        FROM TABLE (
            TOP_K_ITEMS_TUMBLING(
                CURSOR(
                    SELECT STREAM *
                    FROM "firehose_clicks_delivery_stream_001" AS c
                    JOIN "products_information" AS p
                    ON c."product_id" = p."product_id"
                ),
                'brand',
                5,
                120
            )
        );

CREATE OR REPLACE STREAM "products_output_stream" (
    product_id VARCHAR(10),
    total_clicks INTEGER
);

CREATE OR REPLACE PUMP "PRODUCTS_STREAM_PUMP" AS
    INSERT INTO "products_output_stream"
        SELECT STREAM *
        FROM TABLE (
            TOP_K_ITEMS_TUMBLING(
                CURSOR(
                    SELECT STREAM * FROM "firehose_clicks_delivery_stream_001"
                ),
                'product_id',
                5,
                120
            )
        );
