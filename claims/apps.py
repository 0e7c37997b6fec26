from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    name = "claims"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from claims.selectors import join_bar
        from queueing.services import join_bar_set

        # Invariant 6 reaches the waiting room: a customer who holds tickets
        # for an event does not queue for it again.
        join_bar_set(join_bar())

        from claims.domain import ClaimStatus
        from inventory.seating.seatmap import seat_map_sold_status_set

        # The seat map shows a seat held by a paid claim as sold.
        seat_map_sold_status_set(ClaimStatus.CONFIRMED)
