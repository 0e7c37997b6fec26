"""The payment event log is append-only (invariant 7): Postgres itself refuses
UPDATE and DELETE on its rows, whatever code (or admin) tries."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION payments_paymentevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'payments_paymentevent is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER payments_paymentevent_append_only
    BEFORE UPDATE OR DELETE ON payments_paymentevent
    FOR EACH ROW EXECUTE FUNCTION payments_paymentevent_append_only();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS payments_paymentevent_append_only ON payments_paymentevent;
DROP FUNCTION IF EXISTS payments_paymentevent_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [("payments", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
