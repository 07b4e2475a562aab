"""What kcat's options are called here, for the option a kcat user types out of habit.

kcat works by mode flags (``kcat -C -t orders -J``) where kafkawire has commands and arguments
(``kafkawire consume orders --format json``): click's bare "No such option '-C'" tells such a
user nothing they can act on. The command group (``app.py``) adds the line below to click's
error for an option the command does not have; kafkawire's own short options (``-b``, ``-o``,
``-e``, ``-c``, ``-p``, ``-G``, ``-K``, ``-H``, ``-Z``, ``-F``, ``tail -f``, ``lag -t``...)
are never looked up here, since click only fails on an option it does not know. This module
imports nothing: it loads only when such an error is shown.
"""

from __future__ import annotations

#: kcat's option -> what does it in kafkawire (the option first, so the line reads on its own).
KCAT_EQUIVALENTS: dict[str, str] = {
    "-C": "-C is kcat's consumer mode: use `kafkawire consume TOPIC` "
          "(or `kafkawire tail TOPIC` for the last records)",
    "-P": "-P is kcat's producer mode: use `kafkawire produce TOPIC [FILE]` "
          "(one record per line of FILE or stdin)",
    "-L": "-L is kcat's metadata listing: use `kafkawire topics`, `kafkawire describe TOPIC` "
          "(partitions, leaders, ISR) or `kafkawire check` (the brokers)",
    "-t": "-t is kcat's topic flag: kafkawire takes topics as arguments, as in "
          "`kafkawire consume TOPIC` and `kafkawire produce TOPIC`",
    "-f": "-f is kcat's format string: use `--format '%k %s\\n'` with `kafkawire consume` or "
          "`kafkawire tail` (the same % codes)",
    "-J": "-J is kcat's JSON envelope: use `--format json` with `kafkawire consume` or "
          "`kafkawire tail` (and `kafkawire --output json` for tables)",
    "-X": "-X is kcat's client property: put the property in a .properties file and give it "
          "as `kafkawire -F FILE COMMAND`",
}


def kcat_equivalent(option: str) -> str | None:
    """What does in kafkawire what kcat's ``option`` does, or None for an option kcat does
    not have (or kafkawire has no word on)."""
    return KCAT_EQUIVALENTS.get(option)
