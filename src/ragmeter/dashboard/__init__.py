"""``ragmeter serve``: the dashboard over the run store (needs ``pip install 'ragmeter[dashboard]'``)."""
