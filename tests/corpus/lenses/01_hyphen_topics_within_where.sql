-- source: luanmorenomaciel/big-data-on-k8s:demos/stream/use-case-6/readme.md, commit 4c9c30e73323ffb1e2e70be891c25f3ec7eb1496
-- modeled on: SQL processor "movie_rating_title_stream": two hyphen-named JSON topics joined ON a value field WITHIN a long duration (hours), four SET lines, unqualified projection, lowercase `where` after WITHIN, no final semicolon
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM "src-app-book-reviews-json" (_key VARCHAR, reader_id INT, score INT) WITH (connector = 'files', format = 'json', path = '/data/book-reviews');
CREATE STREAM "src-app-book-titles-json" (_key VARCHAR, reader_id INT, book_title VARCHAR, blurb VARCHAR, published_on VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/book-titles');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='1000';
SET enable.auto.commit=false;
SET auto.offset.reset='earliest';


INSERT INTO output_stream_lenses_processor_books_reviews_titles
SELECT STREAM
  book_title,
  blurb,
  published_on
FROM src-app-book-reviews-json as reviews JOIN src-app-book-titles-json as titles
   ON reviews.reader_id = titles.reader_id WITHIN 1460h
   where score <=2
