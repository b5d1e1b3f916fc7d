-- Customers are found by their address whatever its case (get_customer, customer_records): an
-- index on lower(email) makes each lookup a probe instead of a scan of every customer, which a
-- worker's read of all the customers of a claim repeats once per ticket.
CREATE INDEX customers_email_lower ON demo.customers (lower(email));
