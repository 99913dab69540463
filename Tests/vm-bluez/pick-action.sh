#!/bin/sh
# dunst's "dmenu" for the test: from the context menu dunst offers, choose the negative action
# (lines look like "#Clear (summary) [id,negative]").
grep -m1 ',negative\]'
