"""Datagen consolidate (spec §4 "datagen (all chunks done) -> datagen-job-cleanup (consolidate +
advance the tracker)"): the consolidate job submitted once per array, tracked, retried, the
datagen tracker row advanced; sweep_cleanup removes the chunk trees only after that."""
