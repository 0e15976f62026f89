-- source: luanmorenomaciel/big-data-on-k8s:demos/stream/use-case-6/readme.md, commit 4c9c30e73323ffb1e2e70be891c25f3ec7eb1496
-- modeled on: the SQL Studio "join query" of the same walkthrough: one lowercase line, plain `select` (snapshot engine), CONCAT, two hyphen-named topics with `as` aliases, lowercase `join ... on`, no WITHIN, no semicolon
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM "src-app-courier-avro" (_key VARCHAR, customer_id INT, email VARCHAR, device VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/couriers');
CREATE STREAM "src-app-customer-avro" (_key VARCHAR, customer_id INT, given_name VARCHAR, family_name VARCHAR, occupation VARCHAR, town VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/customers');
-- program:
select k.email,CONCAT(c.given_name, ' ',c.family_name ) as full_name, c.occupation, c.town,k.device from src-app-customer-avro as c join src-app-courier-avro as k on c.customer_id = k.customer_id
