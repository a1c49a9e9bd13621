"""One research attempt: workspace, channel, legs, gate, publication."""
