"""What every trainer shares: training configs, the ``ragsift train`` command, the training
report and the model card. Trainers themselves are plugins (``ragsift.trainers``)."""
