"""A spending cap for one client (one role in one run): a call is sent only while what is spent,
what is in flight and the call's own projected cost (its prompt tokens with the model's tokenizer
plus `max_tokens` of reply, at litellm's prices) stay within the cap. So the cap is never passed;
the first refused call stops every later one, and each becomes an explicit failure.

Example:
    >>> budget = Budget(0.01)
    >>> ticket = budget.reserve(0.004)
    >>> budget.settle(ticket, 0.001); budget.item_done()
    >>> budget.reserve(0.02) is None, budget.reason()
    (True, 'budget of $0.01 reached after 1 items')
"""

from __future__ import annotations

import re
import threading

# what `Budget.reason` writes: the one phrase an item's error is matched against
_STOPPED = re.compile(r"budget of \$[0-9.e+-]+ reached after \d+ items")


class Budget:
    """Spend against `limit_usd`, safe across threads and concurrent calls."""

    def __init__(self, limit_usd: float) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self.in_flight_usd = 0.0
        self.items_done = 0
        self.stopped = False
        self._lock = threading.Lock()

    def reserve(self, projected_usd: float) -> float | None:
        """Hold `projected_usd` for a call about to be sent; None (and stop) when it would pass the cap."""
        with self._lock:
            if self.stopped or self.spent_usd + self.in_flight_usd + projected_usd > self.limit_usd:
                self.stopped = True
                return None
            self.in_flight_usd += projected_usd
            return projected_usd

    def settle(self, ticket: float, actual_usd: float) -> None:
        """The call came back (or failed): replace its projection by what it cost."""
        with self._lock:
            self.in_flight_usd = max(0.0, self.in_flight_usd - ticket)
            self.spent_usd += actual_usd

    def item_done(self) -> None:
        with self._lock:
            self.items_done += 1

    def reason(self) -> str:
        return f"budget of ${self.limit_usd:g} reached after {self.items_done} items"


def budget_stop(error: str | None) -> str | None:
    """The budget's refusal (`Budget.reason`) inside an item's error text, or None."""
    found = _STOPPED.search(error or "")
    return found.group(0) if found else None
