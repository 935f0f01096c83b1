"""Single-purpose benchmark scripts, each ``python -m benchmarks.experiments.<name>`` from the checkout's root;
they print figures and assert nothing."""
