-- Logs that say what happened (issue 7): the claim records whether an open quiet window is
-- holding the destination's deliveries, so the hold and its release are each logged once — by
-- the one claim whose write changes the flag — however many workers claim the destination.
ALTER TABLE destinations ADD COLUMN quiet_holding boolean NOT NULL DEFAULT false;
