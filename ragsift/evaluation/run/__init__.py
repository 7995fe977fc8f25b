"""The run wing: config -> plan -> engine -> records, manifest and summary (``ragsift evaluate``,
``merge``, ``tune``, ``config validate``). It may import the report wing; never the reverse."""
