# t_pA.py's walk with a node's min_rule checked at every level, not only at the root.
import os, sys
PRUNE = "if (out[base + j] <= x.min_rule) { at[j] = &kEmptyLeaf; continue; }"
exec(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), 't_pA.py')).read())
