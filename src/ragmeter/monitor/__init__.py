"""Online evaluation of live traces in the run store (``ragmeter monitor``)."""

from ragmeter.monitor.online import MonitorSettings, Progress, in_share, monitor_pass, run_monitor

__all__ = ["MonitorSettings", "Progress", "in_share", "monitor_pass", "run_monitor"]
