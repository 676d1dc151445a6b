"""Meta-evaluation: how well metrics agree with human labels (`ragmeter bench`)."""
