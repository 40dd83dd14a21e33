s = s.replace("    if (b->rule[0] >= best) break;  // the rest of the leaf comes after a rule already found\n", "")
