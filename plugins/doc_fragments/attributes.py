# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The attributes every module of this collection documents besides check_mode and diff_mode.
    DOCUMENTATION = r"""
attributes:
  safe_file_operations:
    description:
      - Files are written to a temporary file in the same directory and renamed over the
        target, so a reader never sees a half-written file.
  idempotent:
    description:
      - A second run with the same arguments on an unchanged node reports no change and
        leaves every file's bytes alone.
"""

    # Modules listed in the action group "node" of meta/runtime.yml.
    NODE_GROUP = r"""
attributes:
  action_group:
    description:
      - Use C(group/gpu_node.container_toolkit.node) in C(module_defaults) to set defaults for this
        module and the collection's other node modules at once, such as O(host_root) for a whole play.
    support: full
    membership:
      - gpu_node.container_toolkit.node
"""

    # The modules that edit a configuration file from the controller (the engines' and the
    # toolkit's): how they support the attributes. A module keeps its own diff_mode details (what
    # its diff shows) and may give its own check_mode details.
    CONFIG_EDIT = r"""
attributes:
  check_mode:
    support: full
    details: Nothing is written in check mode; the result says what would change.
  diff_mode:
    support: full
  safe_file_operations:
    support: full
  idempotent:
    support: full
  platform:
    platforms: posix
"""
