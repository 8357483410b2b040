-- The variant: the same schema with other rows, so a query that only fits the original's
-- data (a hard-coded answer, a filter that happens to pick the right row) gives another result.
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), amount REAL NOT NULL);
INSERT INTO customers (id, name, city) VALUES (1, 'Ana', 'Lisbon'), (2, 'Ben', 'Porto'), (3, 'Carla', 'Lisbon'), (4, 'Dan', 'Madrid'), (5, 'Eva', 'Lisbon');
INSERT INTO orders (id, customer_id, amount) VALUES (1, 1, 120.0), (2, 2, 80.0), (3, 3, 45.5), (4, 4, 300.0), (5, 1, 60.0), (6, 2, 500.0), (7, 5, 12.25);
