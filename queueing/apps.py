from django.apps import AppConfig


class QueueingConfig(AppConfig):
    name = "queueing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from events.signals import sale_ended
        from queueing.services.close import on_sale_ended

        sale_ended.connect(on_sale_ended, dispatch_uid="queueing.close_on_sale_ended")

        from inventory.seating.pushes import seat_pushes_connect
        from queueing.pushes import send_many

        # Seat changes go out on the event's socket, batched per tier.
        seat_pushes_connect(send_many)

        from events.selectors import queue_length_reader_set
        from queueing.selectors import queue_length

        # An event's public answer (GET events/{id}/) says how many wait.
        queue_length_reader_set(queue_length)

        from inventory.signals import tickets_freed
        from queueing.receivers import offers_on_tickets_freed

        # Freed tickets of a sold-out event go to its waiting list.
        tickets_freed.connect(offers_on_tickets_freed, dispatch_uid="queueing.waitlist_offers")
