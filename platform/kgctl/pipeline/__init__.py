"""kgctl.pipeline: the batch jobs above the stages (`kgctl extract`, `kgctl demo`): compile,
extract or replay, then evaluate, ground and deduplicate, and report."""
