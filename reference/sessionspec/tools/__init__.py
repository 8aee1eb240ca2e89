"""Tools for stored session logs: the streaming checker, the views at a point in history, progress."""
