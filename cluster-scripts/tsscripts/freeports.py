"""python3 -m tsscripts.freeports N: prints N distinct free loopback TCP ports,
space-separated (held open together while chosen, so that none repeats)."""
import sys

from tsscripts.common import free_ports


def main(argv):
    if len(argv) != 1 or not argv[0].isdigit() or not 1 <= int(argv[0]) <= 1000:
        sys.exit("usage: python3 -m tsscripts.freeports N (1..1000)")
    print(" ".join(str(p) for p in free_ports(int(argv[0]))))


if __name__ == "__main__":
    main(sys.argv[1:])
