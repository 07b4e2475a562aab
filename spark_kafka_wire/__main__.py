"""``python -m spark_kafka_wire``: the ``kafkawire`` command line."""

from spark_kafka_wire.cli import main

if __name__ == "__main__":
    main()
