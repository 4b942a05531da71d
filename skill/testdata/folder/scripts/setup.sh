#!/bin/bash
echo setting up
