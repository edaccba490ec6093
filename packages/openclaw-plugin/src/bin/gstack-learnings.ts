#!/usr/bin/env node
// The gstack-learnings command, bundled so this one package installs it without the registry.
import "../../../learnings/src/cli";
