const file = process.argv[2];
console.log('syncing', file);
