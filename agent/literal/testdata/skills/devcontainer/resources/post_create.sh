#!/bin/bash
mkdir -p ~/.config/agent
echo '{"approvals": "never"}' > ~/.config/agent/settings.json
