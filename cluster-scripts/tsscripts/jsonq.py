"""python3 -m tsscripts.jsonq EXPR: prints the Python expression EXPR, in
which `j` is the JSON document read from stdin (e.g. "j['view']['counts']")."""
import json
import sys


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    j = json.load(sys.stdin)
    print(eval(argv[0], {"j": j}))  # the scripts' own expressions, never input


if __name__ == "__main__":
    main(sys.argv[1:])
