-- Where the developer commands (`mandato trigger`) send the events of the throwaway mandates
-- and processes they make: the commerce's own receiver. NULL: none set.
ALTER TABLE commerces ADD COLUMN webhook_url TEXT;
