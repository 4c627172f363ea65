-- The trigger function of tasks_resume_reminder_roll: clears `roll_stopped_at`, the mark of a
-- recurring reminder the missed-reminder sweep found nothing to roll to.
CREATE OR REPLACE FUNCTION steady_resume_reminder_roll() RETURNS trigger
LANGUAGE plpgsql
AS $$ BEGIN
  NEW.roll_stopped_at := NULL;
  RETURN NEW;
END $$;
