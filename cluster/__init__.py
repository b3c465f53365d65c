"""Running the project's long jobs on one machine or a cluster (:mod:`cluster.executor`)."""
