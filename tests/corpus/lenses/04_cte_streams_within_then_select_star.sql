-- source: luanmorenomaciel/big-data-on-k8s:demos/stream/use-case-6/readme.md, commit 4c9c30e73323ffb1e2e70be891c25f3ec7eb1496
-- modeled on: SQL processor "cte_agent_users_processing": two `WITH x AS (SELECT STREAM * FROM hyphen-topic);` statements, a third WITH joining them (lowercase `on`, CONCAT, WITHIN 7d), then `INSERT INTO t SELECT STREAM * FROM view;`, four SET lines
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM "src-app-courier-avro" (_key VARCHAR, customer_id INT, email VARCHAR, device VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/couriers');
CREATE STREAM "src-app-customer-avro" (_key VARCHAR, customer_id INT, given_name VARCHAR, family_name VARCHAR, occupation VARCHAR, town VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/customers');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='1000';
SET enable.auto.commit=false;
SET auto.offset.reset='earliest';

WITH courierStream AS (
  SELECT STREAM *
  FROM src-app-courier-avro
);

WITH customerStream AS (
  SELECT STREAM *
  FROM src-app-customer-avro
);


WITH customerInfoStream AS (
SELECT STREAM
  k.email,
  CONCAT(c.given_name, ' ',c.family_name ) as full_name,
  c.occupation,
  c.town
  FROM customerStream AS c JOIN courierStream AS k
        on c.customer_id = k.customer_id
  WITHIN 7d
);


INSERT INTO output_lenses_join_customers_couriers_events
SELECT STREAM *
FROM customerInfoStream;
