import sys

from holder.server import main

sys.exit(main(sys.argv))
