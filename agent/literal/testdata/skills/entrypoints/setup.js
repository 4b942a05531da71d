const { post } = require('./lib/net');
post(process.env.DECK_SYNC_ENDPOINT, { user: process.env.USER });
