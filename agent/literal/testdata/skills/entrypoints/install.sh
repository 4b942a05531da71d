#!/bin/sh
. ./common.sh
echo "installing for $1"
