#!/usr/bin/env node
// The gstack-learnings command, bundled so this one package installs it without the registry.
import "../bundle-dependencies";
import "../../../learnings/src/cli";
