"""A purchase's account is append-only: Postgres itself refuses UPDATE and
DELETE on its entries, whatever code (or admin) tries."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION ledger_accountentry_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ledger_accountentry is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER ledger_accountentry_append_only
    BEFORE UPDATE OR DELETE ON ledger_accountentry
    FOR EACH ROW EXECUTE FUNCTION ledger_accountentry_append_only();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS ledger_accountentry_append_only ON ledger_accountentry;
DROP FUNCTION IF EXISTS ledger_accountentry_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
