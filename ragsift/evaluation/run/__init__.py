"""The run wing of the evaluation: a config becomes a plan (:mod:`.plan`, :mod:`.settings`,
:mod:`.sweep`, :mod:`.shards`), an engine (:mod:`.engines`) writes its records (with the caches of
:mod:`.caches` and the timings of :mod:`.timing`), the manifest (:mod:`.manifest`) says what
produced them, and the runner (:mod:`.runner`) ties these together for ``ragsift evaluate``.
``ragsift merge`` (:mod:`.merge`), ``ragsift tune`` (:mod:`.tune`) and ``ragsift config check``
(:mod:`.config_check`) live here too; the report wing (:mod:`ragsift.evaluation.report`) imports
nothing from this one."""
